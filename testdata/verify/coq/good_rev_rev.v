Lemma rev_app : forall (A : Type) (l m : list A), rev (l ++ m) = rev m ++ rev l.
Proof.
  intros A l m. induction l as [|a l IH]; simpl.
  - rewrite app_nil_r. reflexivity.
  - rewrite IH, app_assoc. reflexivity.
Qed.

Theorem rev_rev : forall (A : Type) (l : list A), rev (rev l) = l.
Proof.
  intros A l. induction l as [|a l IH]; simpl.
  - reflexivity.
  - rewrite rev_app, IH. reflexivity.
Qed.
