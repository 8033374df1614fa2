Module M.
Section S.
Theorem inner : True.
Proof.
  Redirect "/tmp/warren-verify-canary/redirected" Print nat.
  exact I.
Qed.
End S.
End M.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
