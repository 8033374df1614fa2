package main

import "fmt"

// exitCodeError makes the process exit with Code without printing an error:
// the command already said what happened (or Code is a child's exit status
// passed through).
type exitCodeError struct {
	Code int
}

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }
