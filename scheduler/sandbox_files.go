package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/warrenhq/warren/messages"
)

// CopyOptions tune CopyTo.
type CopyOptions struct {
	// Mode is a new file's permission. Defaults to 0600.
	Mode fs.FileMode
	// Parents creates missing parent directories. Defaults to false.
	Parents bool
}

// CopyTo writes everything r yields to path in the session's home,
// replacing the file, in chunks of messages.MaxSandboxChunk; binary-safe.
// It returns the bytes written.
func (s *Sandbox) CopyTo(ctx context.Context, r io.Reader, path string, o CopyOptions) (int64, error) {
	buf := make([]byte, messages.MaxSandboxChunk)
	var off int64
	for first := true; ; first = false {
		n, rerr := io.ReadFull(r, buf)
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return off, rerr
		}
		if n > 0 || first {
			f := &messages.SandboxFile{Path: path, Offset: off, Data: buf[:n], Ranged: !first, Mode: uint32(o.Mode.Perm()), Parents: o.Parents}
			if _, err := s.request(ctx, messages.SbxWrite, &messages.SandboxRequest{File: f}); err != nil {
				return off, err
			}
			off += int64(n)
		}
		if rerr != nil {
			return off, nil
		}
	}
}

// CopyFrom writes length bytes (< 0: to the end) of the file at path from
// offset to w, in chunks; it returns the bytes written.
func (s *Sandbox) CopyFrom(ctx context.Context, path string, w io.Writer, offset, length int64) (int64, error) {
	var done int64
	for length < 0 || done < length {
		n := int64(messages.MaxSandboxChunk)
		if length >= 0 {
			n = min(n, length-done)
		}
		r, err := s.request(ctx, messages.SbxRead, &messages.SandboxRequest{File: &messages.SandboxFile{Path: path, Offset: offset + done, Length: n}})
		if err != nil {
			return done, err
		}
		if _, err := w.Write(r.Data); err != nil {
			return done, err
		}
		done += int64(len(r.Data))
		if r.EOF || len(r.Data) == 0 {
			break
		}
	}
	return done, nil
}

// ListPage lists up to limit (0 = the host's default) entries of the
// directory at path after the name after; next is the after of the next
// page, "" on the last.
func (s *Sandbox) ListPage(ctx context.Context, path, after string, limit int) (entries []messages.FileEntry, next string, err error) {
	r, err := s.request(ctx, messages.SbxList, &messages.SandboxRequest{File: &messages.SandboxFile{Path: path, After: after, Limit: limit}})
	if err != nil {
		return nil, "", err
	}
	return r.Entries, r.Next, nil
}

// List lists the whole directory at path ("" = the home), page by page.
func (s *Sandbox) List(ctx context.Context, path string) ([]messages.FileEntry, error) {
	var all []messages.FileEntry
	after := ""
	for {
		es, next, err := s.ListPage(ctx, path, after, 0)
		if err != nil {
			return all, err
		}
		all = append(all, es...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}

// Stat describes the file at path without following a symlink.
func (s *Sandbox) Stat(ctx context.Context, path string) (*messages.FileEntry, error) {
	r, err := s.request(ctx, messages.SbxStat, &messages.SandboxRequest{File: &messages.SandboxFile{Path: path}})
	if err != nil {
		return nil, err
	}
	if len(r.Entries) != 1 {
		return nil, fmt.Errorf("scheduler: stat reply with %d entries", len(r.Entries))
	}
	return &r.Entries[0], nil
}

// Mkdir creates the directory at path and its parents.
func (s *Sandbox) Mkdir(ctx context.Context, path string) error {
	_, err := s.request(ctx, messages.SbxMkdir, &messages.SandboxRequest{File: &messages.SandboxFile{Path: path}})
	return err
}

// Remove deletes the file or (recursive) directory at path; a symlink is
// removed, never followed.
func (s *Sandbox) Remove(ctx context.Context, path string, recursive bool) error {
	_, err := s.request(ctx, messages.SbxRemove, &messages.SandboxRequest{File: &messages.SandboxFile{Path: path, Recursive: recursive}})
	return err
}
