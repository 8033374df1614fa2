Notation "x *) y" := (x * y) (at level 40).
Definition six := (* two *) 2 *) 3.
Add LoadPath "/tmp" as Host.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
