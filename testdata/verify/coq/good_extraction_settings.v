Require Extraction.
Definition double n := n + n.
Extraction Inline double.
Extraction NoInline Nat.add.
Extraction Language OCaml.
Extraction Implicit double [].
Extraction Blacklist List String.
Extraction double.
Recursive Extraction double.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
