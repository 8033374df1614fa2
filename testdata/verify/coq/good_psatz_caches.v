Require Import ZArith Psatz.
Goal forall x y : Z, (x*x + y*y >= 2*x*y)%Z. intros. psatz Z 2. Qed.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
