package scenarios

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/worker"
)

// component reports a component's config error at field (its own field
// path appended, when it names one).
func (v *validator) component(field string, err error) {
	if err == nil {
		return
	}
	sub, reason := componentField(err)
	if sub != "" {
		field += "." + sub
	}
	v.badErr(field, err, "%s", reason)
}

// each reports every problem a component's own Validate finds in *cfg, not
// only the first: after each, the field it names is set to its zero value
// (its default) in a copy and Validate runs again. fix, when not nil, may
// repair a field whose zero value is not valid either.
func each[T any](v *validator, field string, cfg T, validate func(T) error, fix func(cfg *T, sub string) bool) {
	seen := map[string]bool{}
	for range 32 {
		err := validate(cfg)
		if err == nil {
			return
		}
		sub, _ := componentField(err)
		v.component(field, err)
		if sub == "" || seen[sub] {
			return
		}
		seen[sub] = true
		if (fix == nil || !fix(&cfg, sub)) && !zeroField(reflect.ValueOf(&cfg).Elem(), sub) {
			return
		}
	}
}

// zeroField sets the field at path ("Routes[2].Timing.GroupWait") of v, a
// struct, to its zero value; false when there is no such field.
func zeroField(v reflect.Value, path string) bool {
	for _, part := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		if v.Kind() != reflect.Struct {
			return false
		}
		v = v.FieldByName(name)
		if !v.IsValid() || !v.CanSet() {
			return false
		}
		if hasIdx {
			i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			if err != nil || v.Kind() != reflect.Slice || i < 0 || i >= v.Len() {
				return false
			}
			// The slice is shared with the scenario: copy it first.
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			v.Set(c)
			v = v.Index(i)
		}
	}
	v.SetZero()
	return true
}

// componentField returns the field a component's config error names and
// its reason.
func componentField(err error) (field, reason string) {
	var (
		re *retry.ConfigError
		de *degrade.ConfigError
		ae *alert.ConfigError
		we *worker.ConfigError
		se *store.ConfigError
	)
	switch {
	case errors.As(err, &re):
		return re.Field, fmt.Sprintf("%s (got %v)", re.Reason, re.Value)
	case errors.As(err, &de):
		return de.Field, fmt.Sprintf("%s (got %v)", de.Reason, de.Value)
	case errors.As(err, &ae):
		return ae.Field, ae.Reason
	case errors.As(err, &we):
		return we.Field, we.Reason
	case errors.As(err, &se):
		return se.Field, se.Reason
	}
	return "", err.Error()
}

// components checks each reference component's configuration as sim.Run
// builds it.
func (v *validator) components() {
	sc := v.sc
	cfg := sc.StoreConfig()
	if err := cfg.Validate(); err != nil {
		var se *store.ConfigError
		field := "System.DLQ"
		if errors.As(err, &se) {
			switch se.Field {
			case "DLQCapacity":
				field += ".Capacity"
			case "Overflow":
				field += ".Overflow"
			}
		}
		_, reason := componentField(err)
		v.badErr(field, err, "%s", reason)
	}
	if sc.System.Rules != nil {
		if _, err := classify.New(sc.System.Rules); err != nil {
			v.badErr("System.Rules", err, "%v", err)
		}
	}
	v.component("System.Retry", sc.System.Retry.Validate())

	acfg := sc.AlertConfig(func(string) alert.Sink { return validationSink{} })
	for _, r := range acfg.Receivers {
		v.receivers = append(v.receivers, r.Name)
	}
	before := len(v.errs)
	each(v, "System.Alerts", acfg, alert.Config.Validate, func(c *alert.Config, sub string) bool {
		if len(c.Receivers) == 0 {
			return false
		}
		if sub == "DefaultReceiver" {
			c.DefaultReceiver = c.Receivers[0].Name
			return true
		}
		var i int
		if _, err := fmt.Sscanf(sub, "Routes[%d].Receiver", &i); err == nil && i >= 0 && i < len(c.Routes) && sub == fmt.Sprintf("Routes[%d].Receiver", i) {
			c.Routes = slices.Clone(c.Routes)
			c.Routes[i].Receiver = c.Receivers[0].Name
			return true
		}
		return false
	})
	v.suggestReceivers(v.errs[before:], acfg)

	for i, b := range sc.System.Breakers {
		f := fmt.Sprintf("System.Breakers[%d]", i)
		each(v, f+".Config", b.Config, func(c degrade.BreakerConfig) error { return c.WithDefaults().Validate() }, nil)
		each(v, f+".Fallback", b.Fallback, func(c degrade.FallbackConfig) error { return c.WithDefaults().Validate() }, nil)
		name := b.Config.Name
		if name == "" {
			continue
		}
		if slices.Contains(v.breakers, name) {
			v.bad(f+".Config.Name", "a second breaker for dependency %q", name)
		} else if !slices.Contains(v.deps, name) {
			v.bad(f+".Config.Name", "no task calls dependency %q, so the breaker never sees a call%s", name, suggest(name, v.deps))
		}
		v.breakers = append(v.breakers, name)
	}
	clk := clock.NewVirtual(sc.Start)
	if sc.System.Monitor != nil {
		each(v, "System.Monitor", sc.MonitorConfig(validationStore{}, (*alert.Alerter)(nil), "sim", clk), worker.MonitorConfig.Validate, nil)
	}
	if sc.System.AutoRetry != nil {
		each(v, "System.AutoRetry", sc.AutoRetryConfig(validationStore{}, clk), worker.AutoRetryConfig.Validate, func(c *worker.AutoRetryConfig, sub string) bool {
			if sub == "Window.End" { // equal to Start: any other hour will do
				c.Window.End = (c.Window.Start + time.Hour) % (24 * time.Hour)
				return true
			}
			return false
		})
	}
}

// suggestReceivers makes the alerter's "not a receiver" errors say which
// receivers there are, and which was meant.
func (v *validator) suggestReceivers(errs []error, acfg alert.Config) {
	for _, err := range errs {
		se, ok := err.(*ScenarioError)
		if !ok {
			continue
		}
		var name string
		switch {
		case se.Field == "System.Alerts.DefaultReceiver":
			name = acfg.DefaultReceiver
			if name == "" {
				se.Reason = "expected the receiver of the alerts no route takes, one of " + strings.Join(v.receivers, ", ")
				continue
			}
		case strings.HasPrefix(se.Field, "System.Alerts.Routes[") && strings.HasSuffix(se.Field, "].Receiver"):
			i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(se.Field, "System.Alerts.Routes["), "].Receiver"))
			if err != nil || i >= len(acfg.Routes) {
				continue
			}
			name = acfg.Routes[i].Receiver
		default:
			continue
		}
		se.Reason = fmt.Sprintf("%q is not a receiver (the receivers are %s)%s", name, strings.Join(v.receivers, ", "), suggest(name, v.receivers))
	}
}

var _ alert.Sink = validationSink{}

// validationSink stands for the simulator's recording sinks while
// validating the alerter's configuration.
type validationSink struct{}

func (validationSink) Send(context.Context, alert.Notification) error { return nil }

// validationStore stands for the run's DLQ while validating the monitor's
// and the auto-retry's configurations, which only need one to be given.
type validationStore struct{}

var (
	_ worker.StatsReader = validationStore{}
	_ worker.RetryStore  = validationStore{}
)

func (validationStore) Stats(context.Context) (dlq.Stats, error) { return dlq.Stats{}, nil }

func (validationStore) List(context.Context, dlq.Filter, string, int) (dlq.Page, error) {
	return dlq.Page{}, nil
}

func (validationStore) Requeue(context.Context, string, dlq.RequeueOptions, time.Time) (dlq.RequeueOutcome, error) {
	return 0, nil
}

func (validationStore) Quarantine(context.Context, string, string, time.Time) error { return nil }
