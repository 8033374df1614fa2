Unset Positivity Checking.
Inductive Bad : Type := mk : (Bad -> False) -> Bad.
Set Positivity Checking.

Definition f (b : Bad) : False := match b with mk g => g b end.

Theorem two_two : 2 + 2 = 5.
Proof. destruct (f (mk f)). Qed.
