Require Import List.

Definition big := List.repeat 7 50000000.
Eval vm_compute in List.length (big ++ big ++ big ++ big).
