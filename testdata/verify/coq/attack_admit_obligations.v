Require Import Program.

Program Definition five : {n : nat | n = 6} := 5.
Admit Obligations.
