package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// terminal is a fake terminal: stdout and stderr both write to it, and it
// keeps the screen as a terminal would show it — a carriage return goes
// back to the start of the line and what follows overwrites it, a newline
// starts a new line, "ESC[2K" clears the line.
type terminal struct {
	mu    sync.Mutex
	lines [][]rune
	col   int
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lines == nil {
		t.lines = [][]rune{nil}
	}
	s := string(p)
	for len(s) > 0 {
		if strings.HasPrefix(s, "\x1b[2K") {
			t.lines[len(t.lines)-1] = nil
			s = s[len("\x1b[2K"):]
			continue
		}
		r := []rune(s[:1])
		if s[0] >= 0x80 {
			r = []rune(s)[:1]
		}
		s = s[len(string(r)):]
		switch r[0] {
		case '\r':
			t.col = 0
		case '\n':
			t.lines = append(t.lines, nil)
			t.col = 0
		default:
			line := &t.lines[len(t.lines)-1]
			for len(*line) <= t.col {
				*line = append(*line, ' ')
			}
			(*line)[t.col] = r[0]
			t.col++
		}
	}
	return len(p), nil
}

// screen returns the lines as shown, trailing blanks trimmed.
func (t *terminal) screen() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.lines))
	for i, l := range t.lines {
		out[i] = strings.TrimRight(string(l), " ")
	}
	return out
}

var _ = Describe("the progress bar", func() {
	It("never garbles a result line: each starts on a line of its own, with no bar in it", func() {
		dir := GinkgoT().TempDir()
		for _, name := range []string{"a", "b", "c", "d"} {
			Expect(os.WriteFile(filepath.Join(dir, name+".yaml"),
				[]byte(strings.Replace(passing, "name: steady", "name: steady-"+name, 1)), 0o600)).To(Succeed())
		}
		term := &terminal{}
		code := cli.Main(context.Background(), []string{"run", dir, "--progress", "always", "--parallel", "1"}, term, term)
		Expect(code).To(Equal(cli.ExitOK))
		screen := term.screen()
		verdicts := 0
		for _, line := range screen {
			if strings.Contains(line, "steady-") && strings.Contains(line, "seed 5") {
				verdicts++
				Expect(line).To(HavePrefix("PASS  steady-"), "a result line starts at the start of its line:\n%s", strings.Join(screen, "\n"))
			}
			Expect(line).NotTo(MatchRegexp(`running.*(PASS|accounted|proved)|(PASS|accounted|proved).*running`), "a bar in a result line")
		}
		Expect(verdicts).To(Equal(4))
		Expect(bytes.Count([]byte(strings.Join(screen, "\n")), []byte("accounted for: 600 created"))).To(Equal(4))
	})
})
