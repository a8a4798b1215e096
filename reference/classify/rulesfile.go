package classify

import (
	"errors"
	"fmt"
	"github.com/faultline/faultline/internal/didyoumean"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// RuleSet is a parsed rule file: its rules, in order (followed by the
// defaults unless the file says `defaults: false`), and the verdict for
// errors none of them matches.
type RuleSet struct {
	Rules    []Rule
	Fallback Classification
}

// Classifier builds the classifier for the rule set.
func (rs RuleSet) Classifier() (*Classifier, error) {
	return NewWithFallback(rs.Rules, rs.Fallback)
}

// The rule file's shape. Every key is optional except a rule's name and
// verdict; unknown keys are errors.
type rulesFile struct {
	Defaults *bool        `yaml:"defaults"`
	Fallback *verdictYAML `yaml:"fallback"`
	Rules    []ruleYAML   `yaml:"rules"`
}

type verdictYAML struct {
	Class    string `yaml:"class"`
	Severity string `yaml:"severity"`
	Source   string `yaml:"source"`
}

type ruleYAML struct {
	Name       string    `yaml:"name"`
	Dependency string    `yaml:"dependency"`
	Task       string    `yaml:"task"`
	Match      matchYAML `yaml:"match"`
	Class      string    `yaml:"class"`
	Severity   string    `yaml:"severity"`
	Source     string    `yaml:"source"`
}

type matchYAML struct {
	Is          []string `yaml:"is"`
	Kind        []string `yaml:"kind"`
	Status      []any    `yaml:"status"`
	Timeout     bool     `yaml:"timeout"`
	Temporary   bool     `yaml:"temporary"`
	DeclineCode []string `yaml:"declineCode"`
	RetryAfter  bool     `yaml:"retryAfter"`
	Message     string   `yaml:"message"`
	// Any must be said outright for a rule that matches every error: an
	// empty match by accident would shadow every rule after it.
	Any          bool `yaml:"any"`
	ShuttingDown bool `yaml:"shuttingDown"`
}

func (m matchYAML) empty() bool {
	return len(m.Is) == 0 && len(m.Kind) == 0 && len(m.Status) == 0 && !m.Timeout && !m.Temporary &&
		len(m.DeclineCode) == 0 && !m.RetryAfter && m.Message == "" && !m.ShuttingDown
}

// ruleFileKeys are every key a rule file may use, for "did you mean".
var ruleFileKeys = []string{
	"defaults", "fallback", "rules",
	"name", "dependency", "task", "match", "class", "severity", "source",
	"is", "kind", "status", "timeout", "temporary", "declineCode", "retryAfter", "message", "any", "shuttingDown",
}

// ParseRules reads a rule file:
//
//	defaults: true            # append DefaultRules after these (the default)
//	fallback: {class: transient, severity: medium, source: system}
//	rules:
//	  - name: smtp-504-transient
//	    dependency: smtp        # optional; a name or a pattern like "smtp-*"
//	    task: send-email        # optional
//	    match:                  # every key given must hold; lists match any element
//	      is: [context.DeadlineExceeded]   # registered sentinels (errors.Is)
//	      kind: [net.OpError]              # registered kinds (errors.As)
//	      status: [504, 500-599, 5xx]
//	      timeout: true                    # Timeout() bool reports true
//	      temporary: true                  # Temporary() bool reports true
//	      declineCode: [processing_error]
//	      retryAfter: true                 # a Retry-After hint is present
//	      shuttingDown: true               # the worker is stopping
//	      message: "(?i)gateway timeout"   # last resort: on the innermost error
//	      # or, for a rule matching every error in its scope: any: true
//	    class: transient
//	    severity: medium
//	    source: dependency
//
// Sentinels and kinds are looked up in reg (DefaultRegistry when nil). Every
// problem found is reported, each a *RuleError with the file, line and column
// and what was expected, joined with errors.Join. ParseRules never panics on
// any input.
func ParseRules(filename string, data []byte, reg *Registry) (rs RuleSet, err error) {
	if reg == nil {
		reg = DefaultRegistry()
	}
	defer func() {
		// The YAML library is third-party code; whatever it does with
		// hostile input, a user sees an error, not a crash.
		if p := recover(); p != nil {
			rs, err = RuleSet{}, &RuleError{File: filename, Msg: fmt.Sprintf("the YAML parser failed on this input: %v", p)}
		}
	}()
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return RuleSet{}, yamlError(filename, err)
	}
	var body ast.Node
	if len(file.Docs) > 1 {
		return RuleSet{}, &RuleError{File: filename, Line: 1, Col: 1, Msg: "expected one YAML document, found " + strconv.Itoa(len(file.Docs))}
	}
	if len(file.Docs) == 1 {
		body = file.Docs[0].Body
	}
	// The shape first: every key of the wrong kind, in plain words. Then
	// only what has the right shape is decoded and checked, so that one
	// pass reports every problem.
	shapes := newShapeChecker(filename)
	var raw rulesFile
	var ruleIndex []int // the rules' indexes in the file, when some were left out
	if shapes.check(body) {
		if body != nil {
			if err := yaml.NodeToValue(body, &raw, yaml.DisallowUnknownField()); err != nil {
				return RuleSet{}, yamlError(filename, err)
			}
		}
	} else {
		raw, ruleIndex = shapes.decodeWellShaped(body)
	}
	p := &ruleParser{file: filename, body: body, reg: reg}
	rs.Fallback = Fallback
	if raw.Fallback != nil {
		rs.Fallback = Classification{Rule: "fallback"}
		rs.Fallback.Class, rs.Fallback.Severity, rs.Fallback.Source = p.verdict("fallback", *raw.Fallback)
	}
	withDefaults := raw.Defaults == nil || *raw.Defaults
	defaultNames := map[string]bool{}
	if withDefaults {
		for _, d := range DefaultRules() {
			defaultNames[d.Name] = true
		}
	}
	names := map[string]int{}
	for k, r := range raw.Rules {
		i := k
		if ruleIndex != nil {
			i = ruleIndex[k]
		}
		rs.Rules = append(rs.Rules, p.rule(i, r))
		field := fmt.Sprintf("rules[%d].name", i)
		if j, dup := names[r.Name]; dup && r.Name != "" {
			p.fail(field, fmt.Sprintf("rule name %q is also rules[%d]'s", r.Name, j), "names identify rules in reports; give each its own")
		} else if defaultNames[r.Name] {
			p.fail(field, fmt.Sprintf("rule name %q is a default rule's", r.Name), "pick another name, or say `defaults: false`")
		}
		names[r.Name] = i
	}
	errs := shapes.errs
	for _, e := range p.errs {
		if !shapes.redundant(e) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return RuleSet{}, sortedErrors(errs)
	}
	if withDefaults {
		rs.Rules = append(rs.Rules, DefaultRules()...)
	}
	if _, err := rs.Classifier(); err != nil {
		return RuleSet{}, err
	}
	return rs, nil
}

// yamlError turns the YAML library's error into a *RuleError with its
// position, adding a suggestion for a misspelt key.
func yamlError(filename string, err error) error {
	re := &RuleError{File: filename, Msg: plainYAMLMessage(err.Error()), Err: err}
	var ye yaml.Error
	if errors.As(err, &ye) {
		re.Msg = plainYAMLMessage(ye.GetMessage())
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			re.Line, re.Col = tok.Position.Line, tok.Position.Column
		}
	}
	var unknown *yaml.UnknownFieldError
	if errors.As(err, &unknown) && unknown.Token != nil {
		key := unknown.Token.Value
		re.Msg = fmt.Sprintf("unknown key %q", key)
		if s := didyoumean.Closest(key, ruleFileKeys); s != "" {
			re.Hint = fmt.Sprintf("did you mean %q?", s)
		}
	}
	return re
}

type ruleParser struct {
	file string
	body ast.Node
	reg  *Registry
	errs []error
}

// fail records an error at the node found by the YAML path (e.g.
// "rules[0].class"), or at the closest parent that exists.
func (p *ruleParser) fail(field, msg, hint string) {
	e := &RuleError{File: p.file, Field: field, Msg: msg, Hint: hint}
	e.Line, e.Col = p.position(field)
	p.errs = append(p.errs, e)
}

func (p *ruleParser) position(field string) (int, int) {
	for f := field; f != "" && p.body != nil; {
		if path, err := yaml.PathString("$." + f); err == nil {
			if n, err := path.FilterNode(p.body); err == nil && n != nil {
				// A mapping's own token is its first colon; point at its first
				// key instead, where a reader looks.
				if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
					n = m.Values[0].Key
				}
				if tok := n.GetToken(); tok != nil && tok.Position != nil {
					return tok.Position.Line, tok.Position.Column
				}
			}
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return 1, 1
}

func (p *ruleParser) verdict(field string, v verdictYAML) (Class, Severity, Source) {
	c, errC := ParseClass(v.Class)
	sev, errS := ParseSeverity(v.Severity)
	src, errR := ParseSource(v.Source)
	for _, x := range []struct {
		key, value string
		err        error
		allowed    []string
	}{
		{"class", v.Class, errC, classNames[1:]},
		{"severity", v.Severity, errS, severityNames[1:]},
		{"source", v.Source, errR, sourceNames[1:]},
	} {
		switch {
		case x.err == nil:
		case strings.TrimSpace(x.value) == "":
			p.fail(field, "missing "+x.key, "expected one of "+strings.Join(x.allowed, ", "))
		default:
			hint := "expected one of " + strings.Join(x.allowed, ", ")
			if s := didyoumean.Closest(x.value, x.allowed); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			p.fail(field+"."+x.key, fmt.Sprintf("unknown %s %q", x.key, x.value), hint)
		}
	}
	return c, sev, src
}

func (p *ruleParser) rule(i int, r ruleYAML) Rule {
	field := fmt.Sprintf("rules[%d]", i)
	out := Rule{Name: r.Name, Dependency: r.Dependency, Task: r.Task}
	if strings.TrimSpace(r.Name) == "" {
		p.fail(field, "missing name", "every rule needs a name, shown in reports when it matches")
	}
	out.Class, out.Severity, out.Source = p.verdict(field, verdictYAML{r.Class, r.Severity, r.Source})
	m := r.Match
	switch {
	case m.Any && !m.empty():
		p.fail(field+".match.any", "`any: true` matches every error; it cannot be combined with other criteria", "remove `any`, or the other criteria")
	case !m.Any && m.empty():
		p.fail(field+".match", "a rule needs a match", "give at least one criterion, or `any: true` to match every error in the rule's scope")
	}
	out.Match.ShuttingDown = m.ShuttingDown
	for j, name := range m.Is {
		if e, ok := p.reg.Sentinel(name); ok {
			out.Match.Is = append(out.Match.Is, e)
			continue
		}
		p.fail(fmt.Sprintf("%s.match.is[%d]", field, j), fmt.Sprintf("unknown sentinel error %q", name), suggestOr(name, p.reg.SentinelNames(), "register it with Registry.RegisterSentinel"))
	}
	for j, name := range m.Kind {
		if k, ok := p.reg.Kind(name); ok {
			out.Match.Kinds = append(out.Match.Kinds, k)
			continue
		}
		p.fail(fmt.Sprintf("%s.match.kind[%d]", field, j), fmt.Sprintf("unknown error kind %q", name), suggestOr(name, p.reg.KindNames(), "register it with Registry.RegisterKind"))
	}
	for j, v := range m.Status {
		sr, err := parseStatus(v)
		if err != nil {
			p.fail(fmt.Sprintf("%s.match.status[%d]", field, j), err.Error(), `expected a status such as 503, a range such as 500-599, or a class such as 5xx`)
			continue
		}
		out.Match.Status = append(out.Match.Status, sr)
	}
	out.Match.Timeout, out.Match.Temporary, out.Match.RetryAfter = m.Timeout, m.Temporary, m.RetryAfter
	out.Match.DeclineCodes = m.DeclineCode
	if m.Message != "" {
		re, err := regexp.Compile(m.Message)
		if err != nil {
			p.fail(field+".match.message", fmt.Sprintf("bad regular expression: %v", err), "the syntax is Go's regexp (RE2)")
		} else {
			out.Match.Message = re
		}
	}
	return out
}

// parseStatus reads 503, "503", "500-599" or "5xx".
func parseStatus(v any) (StatusRange, error) {
	var s string
	switch x := v.(type) {
	case uint64:
		if x > 999 {
			return StatusRange{}, fmt.Errorf("status %d is not within 100-599", x)
		}
		s = strconv.FormatUint(x, 10)
	case int64:
		s = strconv.FormatInt(x, 10)
	case string:
		s = strings.TrimSpace(x)
	default:
		return StatusRange{}, fmt.Errorf("status %v is not a number or a range", v)
	}
	var r StatusRange
	if len(s) == 3 && (s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X') && s[0] >= '1' && s[0] <= '5' {
		lo := int(s[0]-'0') * 100
		r = StatusRange{lo, lo + 99}
	} else if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil {
			return StatusRange{}, fmt.Errorf("status range %q is not two numbers", s)
		}
		r = StatusRange{a, b}
	} else {
		a, err := strconv.Atoi(s)
		if err != nil {
			return StatusRange{}, fmt.Errorf("status %q is not a number", s)
		}
		r = StatusRange{a, a}
	}
	if r.Lo < 100 || r.Hi > 599 || r.Lo > r.Hi {
		return StatusRange{}, fmt.Errorf("status %q is not within 100-599", s)
	}
	return r, nil
}

func suggestOr(s string, candidates []string, otherwise string) string {
	if m := didyoumean.Closest(s, candidates); m != "" {
		return fmt.Sprintf("did you mean %q?", m)
	}
	return otherwise
}
