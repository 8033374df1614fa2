Require Import Coq.Logic.Hurkens.

#[bypass_check(universes)]
Theorem absurd : False.
Proof. exact (TypeNeqSmallType.paradox Type eq_refl). Qed.

Theorem two_two : 2 + 2 = 5.
Proof. destruct absurd. Qed.
