package workerproc

import (
	cryptorand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// The environment a black-box drill gives the commands it starts (see
// drill.EnvDrillFile and its neighbours; repeated here, as the drill
// imports this package).
const (
	envDrillFile = "FAULTLINE_DRILL_FILE"
	envRedisURL  = "FAULTLINE_REDIS_URL"
	envNamespace = "FAULTLINE_NAMESPACE"
	envWorker    = "FAULTLINE_WORKER"
	envTimeScale = "FAULTLINE_TIME_SCALE"
	envOrigin    = "FAULTLINE_CLOCK_ORIGIN"
)

// drillFile is the JSON file a black-box drill writes for each copy of
// the system it starts (drill.DrillFile).
type drillFile struct {
	Namespace    string            `json:"namespace"`
	RedisURL     string            `json:"redisURL"`
	Worker       string            `json:"worker"`
	TimeScale    float64           `json:"timeScale"`
	ClockOrigin  time.Time         `json:"clockOrigin"`
	Dependencies map[string]string `json:"dependencies"`
	Receivers    map[string]struct {
		URL string `json:"url"`
	} `json:"receivers"`
}

// ErrStandalone is matched by the errors of StandaloneConfig.
var ErrStandalone = errors.New("standalone worker")

// StandaloneConfig is the configuration of the reference worker run as a
// team's own system would be in a black-box drill: the scenario at source,
// and what the drill gives every copy it starts — its drill file
// (FAULTLINE_DRILL_FILE), or else the FAULTLINE_* variables. The worker
// reports nothing to the drill (no feed): the drill judges it from
// outside, through the faultline layout, like any other system; it alerts
// through its own reference alerter to the drill's receivers.
func StandaloneConfig(source string, getenv func(string) string) (*Config, error) {
	var df drillFile
	if path := getenv(envDrillFile); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStandalone, err)
		}
		if err := json.Unmarshal(b, &df); err != nil {
			return nil, fmt.Errorf("%w: drill file %s: %w", ErrStandalone, path, err)
		}
	} else {
		df.RedisURL, df.Namespace, df.Worker = getenv(envRedisURL), getenv(envNamespace), getenv(envWorker)
		if s := getenv(envTimeScale); s != "" {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q: not a number", ErrStandalone, envTimeScale, s)
			}
			df.TimeScale = f
		}
		if s := getenv(envOrigin); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q: not an RFC 3339 time", ErrStandalone, envOrigin, s)
			}
			df.ClockOrigin = t
		}
	}
	switch {
	case df.RedisURL == "" || df.Namespace == "":
		return nil, fmt.Errorf("%w: no Redis URL or namespace: run it from a black-box drill (which sets %s), or set %s and %s", ErrStandalone, envDrillFile, envRedisURL, envNamespace)
	case df.TimeScale == 0:
		df.TimeScale = 1
	}
	if df.Worker == "" {
		df.Worker = "w1"
	}
	defect := getenv(EnvDefect)
	if err := checkDefect(defect); err != nil {
		return nil, err
	}
	// Outside the simulator a process's times are the wall clock's: at
	// the clock's origin its clock reads the wall clock, then runs at the
	// time scale. Copies given one origin (a drill gives every copy and
	// restart the same) agree on the time; without one, each starts its
	// own at its start, and copies at a scale above 1 drift apart by
	// their restarts (their leases and their leader's with them).
	origin := df.ClockOrigin
	if origin.IsZero() {
		origin = time.Now()
	}
	cfg := &Config{Name: df.Worker, Source: source, RedisURL: df.RedisURL, Namespace: df.Namespace, Scale: df.TimeScale,
		Start: origin, Origin: origin, Gateways: map[string]string{}, CallTimeout: 30 * time.Second, Receivers: map[string]string{}, Broken: defect}
	for name, u := range df.Dependencies {
		cfg.Gateways[name] = strings.TrimSuffix(u, gateway.CallPath)
	}
	for name, r := range df.Receivers {
		cfg.Receivers[name] = r.URL
	}
	l, err := LoadScenario(source, scenarios.Limits{})
	if err != nil {
		return nil, fmt.Errorf("load scenario %s: %w", source, err)
	}
	cfg.Seed = l.Scenario.Seed
	if getenv(envDrillFile) == "" {
		// The variables every started command gets, by dependency and
		// receiver name.
		for _, t := range l.Scenario.Workload.Tasks {
			if u := getenv("FAULTLINE_DEPENDENCY_" + EnvName(t.Dependency)); t.Dependency != "" && u != "" {
				cfg.Gateways[t.Dependency] = strings.TrimSuffix(u, gateway.CallPath)
			}
		}
		if u := getenv("FAULTLINE_SLACK_URL"); u != "" {
			cfg.Receivers["slack"] = u
		}
	}
	for _, t := range l.Scenario.Workload.Tasks {
		if _, ok := cfg.Gateways[t.Dependency]; t.Dependency != "" && !ok {
			return nil, fmt.Errorf("%w: no URL for dependency %s of task %s: run it from a black-box drill, which gives %s", ErrStandalone, t.Dependency, t.Name, envDrillFile)
		}
	}
	return cfg, nil
}

// EnvName is a dependency's or receiver's name as the tail of an
// environment variable's name: upper-cased, non-alphanumerics as _
// (FAULTLINE_DEPENDENCY_PAYMENT_GATEWAY).
func EnvName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// standaloneAlerter is a standalone worker's own reference alerter, its
// receivers Slack webhooks to the drill's receivers.
func standaloneAlerter(sc *scenarios.Scenario, cfg *Config, clk clock.Clock) (*alert.Alerter, error) {
	names := make([]string, 0, len(cfg.Receivers))
	for n := range cfg.Receivers {
		names = append(names, n)
	}
	slices.Sort(names)
	var ferr error
	acfg := sc.AlertConfig(func(name string) alert.Sink {
		u, ok := cfg.Receivers[name]
		if !ok {
			u = cfg.Receivers[names[0]]
		}
		s, err := sink.NewSlack(sink.SlackConfig{URL: u})
		if err != nil {
			ferr = err
			return nil
		}
		return s
	})
	if ferr != nil {
		return nil, fmt.Errorf("alert sink: %w", ferr)
	}
	return alert.New(acfg, clk, sim.NewStream(cfg.Seed, "alert/"+cfg.Name))
}

// breakerListener hears a process's breaker transitions: the relay, or
// (two-leaders) the process's own alerter.
type breakerListener interface {
	BreakerChanged(t degrade.Transition)
}

// standaloneControl is a standalone worker's alerting and DLQ duties, run
// once per fleet: the core's alerter is a relay to the store's log; the
// process the store elects leader drains the log into its own reference
// alerter and runs the DLQ monitor and the off-peak auto-retry the
// scenario configures. The defect two-leaders runs them in every copy
// instead, each alerter hearing its own process alone (the core's alerter
// and the breakers' listener are the process's own).
func standaloneControl(sc *scenarios.Scenario, cfg *Config, clk *clock.Scaled, st *redisstore.Store, sys *sim.WorkerSystem) (worker.Alerter, breakerListener, *fleet.Control, error) {
	own, err := standaloneAlerter(sc, cfg, clk)
	if err != nil {
		return nil, nil, nil, err
	}
	var duties []fleet.Duty
	if sc.System.Monitor != nil {
		mon, err := worker.NewMonitor(sc.MonitorConfig(st, own, cfg.Namespace, clk))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("monitor: %w", err)
		}
		duties = append(duties, mon)
	}
	if sc.System.AutoRetry != nil {
		ar, err := worker.NewAutoRetry(sc.AutoRetryConfig(st, clk))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("auto-retry: %w", err)
		}
		duties = append(duties, ar)
	}
	// A holder names one process of the fleet, whatever the containers'
	// pids and hostnames: the copy's name, its host, its pid and a random
	// word.
	host, _ := os.Hostname()
	var nonce [2]byte
	_, _ = cryptorand.Read(nonce[:]) // an identity, not a draw of the run: no seeded stream
	holder := fmt.Sprintf("%s@%s/%d/%x", cfg.Name, host, os.Getpid(), nonce)
	var leaders fleet.LeaderStore = st
	if cfg.Broken == "two-leaders" {
		leaders = everyoneLeads{}
	}
	el, err := fleet.NewElector(fleet.ElectorConfig{Store: leaders, Clock: clk, Holder: holder})
	if err != nil {
		return nil, nil, nil, err
	}
	var log fleet.Log = st
	if cfg.Broken == "two-leaders" {
		log = ownLog{}
	}
	relay, err := fleet.NewRelay(fleet.RelayConfig{Log: log, Process: holder, Fingerprint: own.Fingerprint, Clock: clk})
	if err != nil {
		return nil, nil, nil, err
	}
	// A record stays in the log until the leader's alerter has had the
	// time to page it, and a tick more: a leader that dies first leaves it
	// to its successor.
	interval := min(time.Second, sc.Workers.LeaseTTL/10)
	drain, err := fleet.NewDrain(fleet.DrainConfig{Log: log, Elector: el, To: own, Clock: clk, Hold: own.MaxGroupWait() + 2*interval})
	if err != nil {
		return nil, nil, nil, err
	}
	ctl, err := fleet.NewControl(fleet.ControlConfig{Elector: el, Relay: relay, Drain: drain, Duties: duties, Clock: clk,
		// As often as the runner's maintenance: a relayed failure reaches
		// the leader's alerter within one tick.
		Interval: interval,
		// Well within the leader's lease (wall time).
		StoreTimeout: min(max(clk.ToWall(sc.Workers.LeaseTTL/3), 50*time.Millisecond), clk.ToWall(fleet.DefaultTTL/3))})
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Broken == "two-leaders" {
		return own, own, ctl, nil
	}
	return relay, relay, ctl, nil
}
