(* Load "x". Redirect "y" Print nat. (* Cd "/tmp". *) *)
Require Import Coq.Strings.String.
Definition note := "Load ""x"". Extraction ""y"" nat."%string.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  (* Axiom junk : False. *)
  intros n. induction n as [|n IH].
  - reflexivity.
  - simpl. rewrite IH. reflexivity.
Qed.
