(* A notation that expands to an @-application of a library lemma. *)
Notation add_zero := (fun n : nat => @eq_sym nat n (n + 0) (@plus_n_O n)).
