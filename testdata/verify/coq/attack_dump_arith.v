Require Import ZArith Lia.
Set Dump Arith "dumped".
Goal forall x y : Z, (0 <= x -> 0 <= y -> 0 <= x * y)%Z. intros; nia. Qed.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
