package cli

import (
	"fmt"
	"os"
)

// checkOutputDir makes sure faultline can write files in dir, creating it
// if needed, before any run starts: an unwritable --report-dir is invalid
// input (exit 2) naming the path, found at once rather than after the
// runs. flag names the flag that gave dir.
func checkOutputDir(flag, dir string) error {
	bad := func(err error) error {
		return &InvalidInputError{Err: fmt.Errorf("%s %s: cannot write reports there: %w", flag, dir, err),
			Hint: "Try: a directory you can write to, e.g. " + flag + " ./faultline-reports"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return bad(err)
	}
	f, err := os.CreateTemp(dir, ".faultline-write-check-*")
	if err != nil {
		return bad(err)
	}
	name := f.Name()
	cerr := f.Close()
	if err := os.Remove(name); err != nil {
		return bad(err)
	}
	if cerr != nil {
		return bad(cerr)
	}
	return nil
}
