package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline/faultline/reference/redact"
)

// shrunkOut prints the shrunk scenarios masked, like everything faultline
// prints, and writes them unmasked where --shrunk-out says: the one place
// the run reveals a scenario's secrets (redact.Policy, redact.Scenario),
// because only the file as it was can reproduce the failure. The file is
// created with mode 0600.
type shrunkOut struct {
	// path is --shrunk-out: "" for none, a directory (one NAME.yaml per
	// shrunk scenario), or a file (one shrunk scenario).
	path    string
	written []string
	err     error
}

// reveal is the policy of the --shrunk-out file.
var reveal = redact.Policy{Reveal: []redact.Field{redact.Scenario}}

// emit prints the shrunk scenario doc, named name, masked on w, and writes
// it unmasked to --shrunk-out if given, as at gives it for the folder it
// is written in (its relative paths resolving from there).
func (s *shrunkOut) emit(w io.Writer, name string, doc []byte, at func(dir string) ([]byte, error)) {
	printed := redact.Policy{}.Text(redact.Scenario, string(doc))
	_, _ = io.WriteString(w, printed)
	if printed != string(doc) && s.path == "" {
		defer fmt.Fprintln(w, "# secrets above are masked; faultline run --shrunk-out FILE writes the scenario as it was (mode 0600)")
	}
	if s.path == "" {
		return
	}
	path := s.path
	if st, err := os.Stat(path); err == nil && st.IsDir() || strings.HasSuffix(path, string(os.PathSeparator)) {
		path = filepath.Join(path, safeName(name)+".yaml")
	} else if len(s.written) > 0 {
		s.fail(fmt.Errorf("--shrunk-out %s: names one file and more than one scenario was shrunk (%s not written); give a directory", s.path, name))
		return
	}
	doc, err := at(filepath.Dir(path))
	if err != nil {
		s.fail(fmt.Errorf("--shrunk-out %s: %w", path, err))
		return
	}
	if err := writePrivate(path, []byte(reveal.Text(redact.Scenario, string(doc)))); err != nil {
		s.fail(&InvalidInputError{Err: fmt.Errorf("--shrunk-out: %w", err)})
		return
	}
	s.written = append(s.written, path)
	fmt.Fprintf(w, "# written, unmasked, to %s\n", masked(path))
}

func (s *shrunkOut) fail(err error) {
	s.err = errors.Join(s.err, err)
}

// writePrivate writes data to path with mode 0600, also when the file
// existed with a wider mode.
// Every error, the close's included (a write lost on close), names path.
func writePrivate(path string, data []byte) error {
	f, err := openOutput(path, createFlags, 0o600)
	if err != nil {
		return err // an *os.PathError: it names path
	}
	fail := func(err error) error {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if c, ok := f.(interface{ Chmod(os.FileMode) error }); ok {
		if err := c.Chmod(0o600); err != nil {
			return fail(err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
