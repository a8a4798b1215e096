package cli

import (
	"os"
	"path/filepath"
	"time"
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

// SetAfterBulkCount sets a function a bulk move (requeue --all, delete
// --all) calls between its count and its move; it returns what undoes it.
func SetAfterBulkCount(f func()) (undo func()) {
	afterBulkCount = f
	return func() { afterBulkCount = nil }
}

// SetLoadingWait sets how long faultline dlq waits for a Redis that answers
// LOADING; it returns what undoes it.
func SetLoadingWait(d time.Duration) (undo func()) {
	old := loadingWait
	loadingWait = d
	return func() { loadingWait = old }
}

// SetNamespaceScan sets the bound of the scan for the namespaces a Redis
// holds: at most calls SCAN steps of count keys; it returns what undoes it.
func SetNamespaceScan(calls, count int) (undo func()) {
	oc, on := nsScanCalls, nsScanCount
	nsScanCalls, nsScanCount = calls, count
	return func() { nsScanCalls, nsScanCount = oc, on }
}
