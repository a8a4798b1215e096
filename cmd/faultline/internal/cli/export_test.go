package cli

import (
	"os"
	"path/filepath"
)

// SetAfterRelease sets the hook called after each run is let go of, for
// the memory benchmark; it returns what undoes it.
func SetAfterRelease(f func()) (undo func()) {
	afterRelease = f
	return func() { afterRelease = nil }
}

// SetCloseFailure makes closing a file the CLI writes whose base name is
// base return err, after the file was really closed: a write lost on close
// (a full disk or a quota found then, an NFS write-back error), which no
// local file system does on demand. It returns what undoes it.
func SetCloseFailure(base string, err error) (undo func()) {
	open := openOutput
	openOutput = func(path string, flag int, perm os.FileMode) (outputFile, error) {
		f, oerr := open(path, flag, perm)
		if oerr != nil || filepath.Base(path) != base {
			return f, oerr
		}
		return failingClose{f.(*os.File), err}, nil
	}
	return func() { openOutput = open }
}

// failingClose is a file whose Close fails.
type failingClose struct {
	*os.File
	err error
}

// Close closes the file and returns the planted error.
func (f failingClose) Close() error {
	_ = f.File.Close()
	return f.err
}
