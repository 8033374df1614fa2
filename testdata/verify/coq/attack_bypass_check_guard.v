#[bypass_check(guard)]
Fixpoint loop (n : nat) : False := loop n.

Theorem two_two : 2 + 2 = 5.
Proof. destruct (loop 0). Qed.
