Theorem big : 100 * 100 = 10000.
Proof. vm_compute. reflexivity. Qed.
