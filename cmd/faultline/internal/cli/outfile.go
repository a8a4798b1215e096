package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// outputFile is a file the CLI writes: a report, summary.json, the
// --shrunk-out scenario, the step summary.
type outputFile interface {
	io.Writer
	// Close closes the file; its error means data written may be lost
	// (a full disk or a quota found on close, an NFS write-back error), and
	// is reported like a failed write.
	Close() error
}

// openOutput opens path for writing; a variable so that the specs can give
// a file whose Close fails, which no local file system does on demand.
var openOutput = func(path string, flag int, perm os.FileMode) (outputFile, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// createFlags truncate or create, as os.Create does.
const createFlags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC

// outputError says that writing path failed, naming it: invalid input
// (exit 2), since the path is what the user gave — an unwritable place, a
// full disk.
func outputError(path string, err error) error {
	var invalid *InvalidInputError
	if errors.As(err, &invalid) {
		return err
	}
	return &InvalidInputError{Err: fmt.Errorf("write %s: %w", path, err),
		Hint: "Try: a place with room that you can write to"}
}

// writeFile creates path, writes it with write and closes it: an error of
// any of the three, the close's included, is an outputError naming path.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := openOutput(path, createFlags, 0o666)
	if err != nil {
		return outputError(path, err)
	}
	if err := write(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return outputError(path, err)
	}
	if err := f.Close(); err != nil {
		return outputError(path, err)
	}
	return nil
}
