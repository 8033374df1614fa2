Conjecture add_zero : forall n : nat, n + 0 = n.
