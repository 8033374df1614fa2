Theorem real : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
(* The name is an abbreviation (an alias of a real proof), not a constant. *)
Notation add_zero := real.
