package initproc

// Step names a setup step of the init; a Failure carries it to the
// worker, which reports it in sandbox.SetupError.Step. Most steps are
// only reported; the constants below are the ones the worker decides on,
// so both sides use the one definition.
type Step string

// StepMakePrivate is the init's first step inside its new namespaces
// (setupNamespace). Refused with EPERM/EACCES it shows the host refusing
// the namespace mode itself (Ubuntu's AppArmor userns restriction), and
// the worker's auto mode falls back to the Landlock mode.
const StepMakePrivate Step = "make mounts private"
