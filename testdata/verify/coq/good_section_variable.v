Section S.
  Variable A : Type.
  Hypothesis H : forall a : A, a = a.
  Lemma use (a : A) : a = a. Proof. apply H. Qed.
End S.

Module M. Module N.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
End N. End M.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. exact M.N.add_zero. Qed.
