Require Extraction.
Tactic Notation "done" "#(*" := reflexivity.
Goal 1 = 1. done #(*. Qed.
Extraction "/tmp/warren-verify-canary/extracted" nat.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
