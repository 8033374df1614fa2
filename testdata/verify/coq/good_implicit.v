Module Helpers.
  Definition id {A : Type} (x : A) : A := x.
End Helpers.

Theorem refl {A : Type} (x : A) : Helpers.id x = x.
Proof. reflexivity. Qed.
