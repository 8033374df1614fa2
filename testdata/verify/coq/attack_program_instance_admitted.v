Require Import Program.
Class C := { c : nat }.
Program Instance inst : C := { c := _ }.
Next Obligation. Admitted.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
