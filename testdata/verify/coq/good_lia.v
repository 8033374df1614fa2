Require Import Lia.

Theorem comm : forall n m : nat, n + m = m + n.
Proof. intros; lia. Qed.
