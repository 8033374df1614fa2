Require Import Lia ZArith.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros; lia. Qed.
Lemma sq : forall x : Z, (x * x >= 0)%Z.
Proof. intros; nia. Qed.
