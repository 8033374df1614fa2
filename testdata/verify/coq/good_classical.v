Require Import Classical.

Theorem em : forall P : Prop, P \/ ~ P.
Proof. exact classic. Qed.
