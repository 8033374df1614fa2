package session

import (
	"context"

	"github.com/warrenhq/warren/sandbox/files"
)

// The file methods serve the session's home from the worker through
// sandbox/files while the sandbox runs, on the home its commands see (the
// runner's HomeView): symlinks, FIFOs, sockets, devices and hard-linked
// files are refused as that package documents, new files belong to the
// sandbox's uid, and writes count against the disk limit (doc.go). Each counts as activity, and each
// returns the session's *GoneError once it has ended (the sandbox's uid is
// then released: nothing may be created in its name).

// Files is the session's home for operations the methods below do not
// cover; calls through it do not count as activity.
func (s *Session) Files() *files.Home { return s.files }

// Read reads up to length bytes of the file at p from offset (length < 0:
// to the end).
func (s *Session) Read(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.touch()
	defer s.touch()
	return s.files.Read(ctx, p, offset, length)
}

// Write writes data to the file at p and returns its new size.
func (s *Session) Write(ctx context.Context, p string, data []byte, opts files.WriteOptions) (int64, error) {
	if err := s.Err(); err != nil {
		return 0, err
	}
	s.touch()
	defer s.touch()
	return s.files.Write(ctx, p, data, opts)
}

// Stat describes the entry at p without following a symlink.
func (s *Session) Stat(ctx context.Context, p string) (files.Entry, error) {
	if err := s.Err(); err != nil {
		return files.Entry{}, err
	}
	s.touch()
	return s.files.Stat(ctx, p)
}

// List describes the entries of the directory at p, sorted by name.
func (s *Session) List(ctx context.Context, p string) ([]files.Entry, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.touch()
	return s.files.List(ctx, p)
}

// Mkdir creates the directory at p and its missing parents.
func (s *Session) Mkdir(ctx context.Context, p string) error {
	if err := s.Err(); err != nil {
		return err
	}
	s.touch()
	return s.files.Mkdir(ctx, p)
}

// Delete removes the entry at p (recursive: a directory and its contents).
func (s *Session) Delete(ctx context.Context, p string, recursive bool) error {
	if err := s.Err(); err != nil {
		return err
	}
	s.touch()
	defer s.touch()
	return s.files.Delete(ctx, p, recursive)
}
