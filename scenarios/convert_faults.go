package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/faultline/faultline/faults"
)

// fault builds a fault from its catalogue model and parameters.
func (c *converter) fault(path string, f Fault) faults.Fault {
	out := faults.Fault{Name: f.Name, RequireHits: f.RequireHits}
	if f.Name == "" {
		c.bad(path+".name", "expected a fault name")
	}
	t, err := faults.ParseTarget(f.Target)
	if err != nil {
		c.bad(path+".target", "%v", err)
	}
	out.Target = t
	m, err := faults.New(f.Model)
	if err != nil {
		c.bad(path+".model", "%v", err)
		return out
	}
	out.Model = c.params(path+".params", m, f.Params)
	s := f.Schedule
	out.Schedule = faults.Schedule{From: s.From.D(), Until: s.Until.D(), Jobs: slices.Clone(s.Jobs), Tasks: slices.Clone(s.Tasks), Attempts: slices.Clone(s.Attempts), FirstCalls: s.FirstCalls, Probability: s.Probability}
	if s.Every != nil {
		out.Schedule.Every = &faults.Periodic{Period: s.Every.Period.D(), Duty: s.Every.Duty, Jitter: s.Every.Jitter.D(), Phase: s.Every.Phase.D()}
	}
	if s.When != nil {
		out.Schedule.When = &faults.When{State: faults.WhenState(s.When.State), Dependency: s.When.Dependency}
	}
	if err := out.Validate(); err != nil && out.Model != nil {
		c.bad(path, "%v", err)
	}
	return out
}

// params sets a model's parameters by their catalogue names.
func (c *converter) params(path string, m faults.Model, params map[string]any) faults.Model {
	v := reflect.New(reflect.TypeOf(m)).Elem()
	v.Set(reflect.ValueOf(m))
	fields := map[string]reflect.Value{}
	var names []string
	for i := range v.NumField() {
		if sf := v.Type().Field(i); sf.IsExported() {
			n := lowerFirst(sf.Name)
			fields[n] = v.Field(i)
			names = append(names, n)
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fv, ok := fields[k]
		p := path + "." + k
		if !ok {
			if len(names) == 0 {
				c.bad(p, "model %s takes no parameters", m.Name())
			} else {
				c.bad(p, "unknown parameter of model %s; expected one of %s%s", m.Name(), strings.Join(names, ", "), suggest(k, names))
			}
			continue
		}
		if err := setParam(fv, params[k]); err != nil {
			c.bad(p, "%v", err)
		}
	}
	return v.Interface().(faults.Model)
}

func lowerFirst(s string) string {
	r := []rune(s)
	// Leading initialisms stay lower together: "URL" → "url".
	for i := 0; i < len(r) && unicode.IsUpper(r[i]); i++ {
		if i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

var durationType = reflect.TypeOf(time.Duration(0))

// setParam sets a model field from a decoded YAML value.
func setParam(f reflect.Value, v any) error {
	switch {
	case f.Type() == durationType:
		s, ok := v.(string)
		if !ok {
			if n, isNum := number(v); isNum && n == 0 {
				f.SetInt(0)
				return nil
			}
			return fmt.Errorf("expected a duration like 30s, got %v", v)
		}
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("expected true or false, got %v", v)
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64 || f.Kind() == reflect.Int32:
		n, ok := number(v)
		if !ok || n != math.Trunc(n) || math.Abs(n) > 1<<31 {
			return fmt.Errorf("expected a whole number, got %v", v)
		}
		f.SetInt(int64(n))
	case f.Kind() == reflect.Float64:
		n, ok := number(v)
		if !ok {
			return fmt.Errorf("expected a number, got %v", v)
		}
		f.SetFloat(n)
	case f.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("expected a string, got %v", v)
		}
		f.SetString(s)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("expected a list of strings, got %v", v)
		}
		out := reflect.MakeSlice(f.Type(), 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return fmt.Errorf("expected a list of strings, got %v", it)
			}
			out = reflect.Append(out, reflect.ValueOf(s))
		}
		f.Set(out)
	default:
		return fmt.Errorf("parameter of unsupported type %s", f.Type())
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}
