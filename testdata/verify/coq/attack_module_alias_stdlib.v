(* A library theorem under the proof's own name, through a module alias. *)
Module A := Coq.Init.Peano.
