(* Include copies a library module's constants as aliases of the originals. *)
Module Lib. Definition add_zero := fun n : nat => eq_sym (plus_n_O n). End Lib.
Include Lib.
