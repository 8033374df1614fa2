package scheduler

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/warrenhq/warren/messages"
)

// ReadBatch reads a JSONL batch: one task object per line; blank lines are
// skipped but still counted, so line numbers match the file. Every line is
// checked before anything is returned: one bad line refuses the whole batch
// with a *BatchError listing the problems by line. Defaults are filled as
// NewBatch describes (a task without id gets its line number).
//
// A line may be up to MaxLineBytes: stdin and files too large for a task
// message go to the inputs object store (see NewBatch).
func ReadBatch(r io.Reader, opts BatchOptions) (*Batch, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		tasks []messages.Task
		lines []int
		bad   []*LineError
	)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br, MaxLineBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("scheduler: read batch: %w", err)
		}
		eof := errors.Is(err, io.EOF)
		switch {
		case tooLong:
			bad = append(bad, &LineError{n, &messages.Error{Code: messages.CodeTooLarge,
				Msg: fmt.Sprintf("line is longer than %d bytes; split the task or its inputs", MaxLineBytes)}})
		case len(bytes.TrimSpace(line)) == 0:
		default:
			t, derr := decodeTaskLine(line)
			if derr != nil {
				bad = append(bad, &LineError{n, derr})
			} else {
				tasks = append(tasks, t)
				lines = append(lines, n)
			}
		}
		if eof {
			break
		}
	}
	return newBatch(tasks, lines, bad, opts)
}

// MaxLineBytes bounds one JSONL line: a task with its inline stdin and
// files, before the large ones are moved to the inputs object store.
const MaxLineBytes = 256 << 20

// readLine returns the next line without its newline. A line longer than max
// is consumed and reported as tooLong without being kept in memory. At the
// end of input it returns io.EOF along with the last (unterminated) line.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		return line, tooLong, err
	}
}
