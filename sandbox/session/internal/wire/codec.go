package wire

import (
	"encoding/binary"
	"fmt"
)

// enc builds a payload.
type enc struct{ b []byte }

func (e *enc) uint(v uint64)  { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) int(v int64)    { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(p []byte) { e.uint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)   { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) bool(v bool) {
	if v {
		e.uint(1)
	} else {
		e.uint(0)
	}
}
func (e *enc) strs(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// dec reads a payload; the first error sticks and every later read
// returns a zero value.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrFrame, what)
	}
}

func (d *dec) uint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) bool(what string) bool {
	switch d.uint(what) {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail(what)
	return false
}

// bytes returns a copy (the frame buffer is reused).
func (d *dec) bytes(what string) []byte {
	n := d.uint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	p := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return p
}

func (d *dec) str(what string) string {
	n := d.uint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads a list length, refused when the rest cannot hold that many
// entries of at least min bytes each (so a length never sizes an
// allocation beyond the frame).
func (d *dec) count(what string, min int) int {
	n := d.uint(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/min) {
		d.fail(what)
		return 0
	}
	return int(n)
}

func (d *dec) strs(what string) []string {
	n := d.count(what, 1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.str(what)
	}
	return ss
}

// end reports the sticky error, or trailing bytes.
func (d *dec) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes after %s", ErrFrame, len(d.b), what)
	}
	return d.err
}
