Require Import ZArith QArith Lia Psatz.
Goal forall x y : Z, (0 <= x -> 0 <= y -> 0 <= x * y)%Z. intros; nia. Qed.
Goal forall x : Q, 0 <= x * x. intros; nra. Qed.
Close Scope Q_scope.
Goal forall a b : nat, (a + b = b + a)%nat. intros; lia. Qed.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
