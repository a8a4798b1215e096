package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/redact"
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

// openHistory opens a history file: masked at rest (oracle.AtRest: each
// secret replaced by a keyed hash under a key drawn for this file and never
// stored; the scenario's planted secrets, public in its file, kept so that
// report check judges the file as the run was judged), mode 0644; or, raw,
// as observed, mode 0600. Close the writer to finish the file.
func openHistory(path string, raw bool, planted []string) (io.WriteCloser, error) {
	mode := os.FileMode(0o644)
	if raw {
		mode = 0o600
	}
	f, err := openOutput(path, createFlags, mode)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode); err != nil { // an older file keeps its mode otherwise
		_ = f.Close()
		return nil, err
	}
	if raw {
		return f, nil
	}
	k, err := redact.NewKeyed(redact.Config{}, planted)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &historyFile{WriteCloser: oracle.AtRest(f, k), f: f}, nil
}

// historyFile closes the masking writer, then the file.
type historyFile struct {
	io.WriteCloser
	f outputFile
}

func (h *historyFile) Close() error {
	err := h.WriteCloser.Close()
	if cerr := h.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeHistory writes a drill's history to path (openHistory).
func writeHistory(path string, h *oracle.History, raw bool, planted []string) error {
	w, err := openHistory(path, raw, planted)
	if err != nil {
		return outputError(path, err)
	}
	if err := oracle.Write(w, h); err != nil {
		_ = w.Close()
		return outputError(path, err)
	}
	if err := w.Close(); err != nil {
		return outputError(path, err)
	}
	return nil
}
