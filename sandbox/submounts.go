package sandbox

import "github.com/warrenhq/warren/sandbox/internal/home"

// ErrSubmounts means a bind's source has mounts under it that the sandbox
// cannot leave out. Binds are not recursive (a host mount under a bound
// path stays out of the sandbox), and in the sandbox's user namespace (as
// root too) the kernel refuses (EINVAL) a non-recursive bind of a
// directory whose submounts it inherited locked: the bind would uncover
// what they cover.
var ErrSubmounts = home.ErrSubmounts
