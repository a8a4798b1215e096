package scenarios

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline/faultline/faults"
)

// problems reports the conversion's problems at the positions of their
// paths, leaving out those about values the decoder already reported.
func (l *loader) problems(eff *parsed, sc Scenario, problems []Problem) {
	decodeFailed := len(l.diags) > 0
	for i := 0; i < len(problems); i++ {
		pr := problems[i]
		if pr.Path == "" && decodeFailed {
			continue // about the document as a whole, which has holes in it
		}
		if split := faultProblems(pr, sc); split != nil {
			problems = append(problems, split...) // reported in turn below
			continue
		}
		if eff.reported(pr.Path) || (pr.Path == "abortIf" && eff.reportedWithin(pr.Path)) {
			continue // a guard left without a bound by a bad or misspelt key is that key's problem
		}
		if root := expectRoot(pr.Path); root != "" && eff.reportedWithin(root) && !eff.written(pr.Path, root) {
			continue // an expectation missing a key because a bad or misspelt one was dropped: that key's problem
		}
		if root := whenRoot(pr.Path); root != "" && eff.reportedWithin(root) && !eff.written(pr.Path, root) {
			continue // a schedule.when missing a key because a misspelt one was dropped: that key's problem
		}
		pl := eff.placeOf(pr.Path)
		if eff.unknownParam(pr.Path) && pl.keyLine > 0 {
			pl.line, pl.col = pl.keyLine, pl.keyCol // the name is wrong, not the value
		}
		l.addAt(pl, pr.Error())
	}
}

// faultProblems splits the problem Convert reports for a whole fault
// ("faults[2]": its Validate failed) into one per field of the fault, at
// that field's path ("faults[2].params.code"); nil when there is nothing to
// split.
func faultProblems(pr Problem, sc Scenario) []Problem {
	num, ok := strings.CutPrefix(pr.Path, "faults[")
	if !ok || !strings.HasSuffix(num, "]") {
		return nil
	}
	i, err := strconv.Atoi(strings.TrimSuffix(num, "]"))
	if err != nil || i < 0 || i >= len(sc.Faults) {
		return nil
	}
	var out []Problem
	for _, e := range flatten(sc.Faults[i].Validate()) {
		var fe *faults.FieldError
		if !errors.As(e, &fe) || fe.Field == "" {
			return nil
		}
		field := fe.Field
		switch {
		case field == "target.kind" || field == "target.name":
			field = "target"
		case strings.HasPrefix(field, "model."):
			field = "params." + strings.TrimPrefix(field, "model.")
		}
		bare := *fe
		bare.Fault, bare.Field = "", ""
		out = append(out, Problem{Path: pr.Path + "." + field, Message: bare.Error()})
	}
	return out
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// unknownParam reports whether path is a fault's parameter
// ("faults[2].params.afterr") that its model does not have.
func (p *parsed) unknownParam(at string) bool {
	rest, ok := strings.CutPrefix(at, "faults[")
	if !ok {
		return false
	}
	num, rest, _ := strings.Cut(rest, "]")
	name, ok := strings.CutPrefix(rest, ".params.")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= len(p.doc.Faults) || strings.ContainsAny(name, ".[") {
		return false
	}
	m, err := faults.New(p.doc.Faults[i].Model)
	if err != nil {
		return false
	}
	for _, e := range faults.Catalogue() {
		if e.Name == m.Name() {
			return !slices.ContainsFunc(e.Params, func(pa faults.Param) bool { return pa.Name == name })
		}
	}
	return false
}

// simPath turns a simulator field ("Workload.Tasks[0].Name") into the
// document's path ("workload.tasks[0].name").
func simPath(field string) string {
	switch field {
	case "Name", "Description", "Tags":
		return "metadata." + lowerFirst(field)
	case "System.Rules":
		return "system.rulesFile"
	}
	var parts []string
	for _, p := range strings.Split(field, ".") {
		prev := ""
		if len(parts) > 0 {
			prev = parts[len(parts)-1]
		}
		p = lowerFirst(p)
		switch {
		case strings.HasPrefix(prev, "steps[") && p == "kind":
			p = "action"
		case strings.HasPrefix(prev, "breakers[") && p == "config":
			continue // a breaker's keys are its config's
		case strings.HasPrefix(prev, "breakers[") && p == "name":
			p = "dependency"
		case strings.HasPrefix(prev, "receivers[") && p == "name":
			continue // a receiver is its name
		case strings.HasPrefix(prev, "expect[") && p == "jobID":
			p = "job"
		case prev == "window" && len(parts) > 1 && parts[len(parts)-2] == "autoRetry":
			parts[len(parts)-1] = "window" + strings.ToUpper(p[:1]) + p[1:]
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ".")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// reported reports whether the decoder reported the value at path or one
// that holds it.
func (p *parsed) reported(at string) bool {
	for q := at; ; q = parentPath(q) {
		if pl, ok := p.index[q]; ok && pl.bad {
			return true
		}
		if q == "" {
			return false
		}
	}
}

// expectRoot returns the expectation ("expect[3]") that path is, or is
// in; "" when it is in none.
func expectRoot(at string) string {
	rest, ok := strings.CutPrefix(at, "expect[")
	num, _, found := strings.Cut(rest, "]")
	if !ok || !found || !isIndex(num) {
		return ""
	}
	return "expect[" + num + "]"
}

// whenRoot returns the schedule.when ("faults[2].schedule.when") that path
// is a key of; "" when it is none's.
func whenRoot(at string) string {
	rest, ok := strings.CutPrefix(at, "faults[")
	num, key, found := strings.Cut(rest, "]")
	if !ok || !found || !isIndex(num) || !strings.HasPrefix(key, ".schedule.when.") {
		return ""
	}
	return "faults[" + num + "].schedule.when"
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && s != "" && s[0] != '-'
}

// written reports whether the value at path was written in the document
// (a key of the expectation at root, not the expectation as a whole).
func (p *parsed) written(at, root string) bool {
	_, ok := p.index[at]
	return ok && at != root
}

// reportedWithin reports whether the decoder reported a value or an
// unknown key inside the value at path.
func (p *parsed) reportedWithin(at string) bool {
	for q, pl := range p.index {
		if pl.bad && len(q) > len(at) && strings.HasPrefix(q, at) && (q[len(at)] == '.' || q[len(at)] == '[') {
			return true
		}
	}
	return false
}

// placeOf returns where the value at path was written or, when it was not
// (a missing key), the key of the nearest value that holds it.
func (p *parsed) placeOf(at string) place {
	if pl, ok := p.index[at]; ok {
		return pl
	}
	for q := parentPath(at); q != ""; q = parentPath(q) {
		if pl, ok := p.index[q]; ok {
			if pl.keyLine > 0 {
				pl.line, pl.col = pl.keyLine, pl.keyCol
			}
			return pl
		}
	}
	return p.index[""]
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// sortDiagnostics orders diagnostics by file (in rank order, else by name),
// then position, dropping duplicates.
func sortDiagnostics(ds []Diagnostic, rank map[string]int) []Diagnostic {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		if a.File != b.File {
			ra, oka := rank[a.File]
			rb, okb := rank[b.File]
			if oka && okb {
				return ra - rb
			}
			return strings.Compare(a.File, b.File)
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return slices.Compact(out)
}
