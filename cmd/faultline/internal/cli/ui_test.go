package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/ui"
)

// uiStartTimeout bounds how long faultline ui may take to answer.
const uiStartTimeout = 15 * time.Second

var _ = Describe("faultline ui", func() {
	// closedRedis is a Redis URL nothing listens on: a refusal must come
	// before any connection (a connection attempt would exit 4, not 2).
	closedRedis := "redis://127.0.0.1:1/0"

	tokensFile := func(content string) string {
		p := filepath.Join(GinkgoT().TempDir(), "tokens")
		Expect(os.WriteFile(p, []byte(content), 0o600)).To(Succeed())
		return p
	}

	It("refuses a listen address off loopback without --tokens, before connecting", func() {
		_, stderr, code := run("ui", "--redis-url", closedRedis, "--listen", "0.0.0.0:8080")
		Expect(code).To(Equal(cli.ExitInvalid), stderr)
		Expect(stderr).To(ContainSubstring("--tokens"))
		Expect(stderr).To(ContainSubstring("not loopback"))
	})

	It("refuses tokens off loopback without TLS unless --insecure-http", func() {
		toks := tokensFile("# ops\nalice:alice-token-0123456789abcdef\n")
		_, stderr, code := run("ui", "--redis-url", closedRedis, "--listen", "10.0.0.1:8080", "--tokens", toks)
		Expect(code).To(Equal(cli.ExitInvalid), stderr)
		Expect(stderr).To(ContainSubstring("--tls-cert"))
		Expect(stderr).To(ContainSubstring("--insecure-http"))
		// With --insecure-http the configuration is accepted: the command
		// goes on to Redis, which is not there (exit 4).
		_, stderr, code = run("ui", "--redis-url", closedRedis, "--listen", "10.0.0.1:8080", "--tokens", toks, "--insecure-http")
		Expect(code).To(Equal(cli.ExitUnavailable), stderr)
	})

	It("refuses half a TLS pair, a malformed tokens file and a short token, naming them", func() {
		_, stderr, code := run("ui", "--redis-url", closedRedis, "--tls-cert", "cert.pem")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("--tls-cert and --tls-key go together"))
		_, stderr, code = run("ui", "--redis-url", closedRedis, "--tokens", tokensFile("alice\n"))
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(MatchRegexp(`the --tokens file .*tokens, line 1: expected name:token`))
		_, stderr, code = run("ui", "--redis-url", closedRedis, "--tokens", tokensFile("alice:short\n"))
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("shorter than"))
		Expect(stderr).NotTo(ContainSubstring("short\n"))
	})

	It("serves the DLQ on loopback until stopped", func() {
		m := redistest.Mini(GinkgoRandomSeed())
		url := "redis://" + m.Addr() + "/0"
		seedDLQ(url)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := ln.Addr().String()
		Expect(ln.Close()).To(Succeed())

		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		var out, errOut bytes.Buffer
		done := make(chan int, 1)
		go func() {
			defer GinkgoRecover()
			done <- cli.Main(ctx, []string{"ui", "--redis-url", url, "--namespace", dlqNamespace, "--listen", addr}, &out, &errOut)
		}()
		get := func(path string) (int, string) {
			resp, err := http.Get(fmt.Sprintf("http://%s%s", addr, path))
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		Eventually(func() int { code, _ := get("/"); return code }).WithTimeout(uiStartTimeout).Should(Equal(http.StatusOK))
		code, body := get("/entries/ord-2")
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring(`namespace <code>ops</code>`))
		code, _ = get("/api/v1/stats")
		Expect(code).To(Equal(http.StatusOK), "the API's reads on loopback without --tokens, as the pages")
		resp, err := http.Post(fmt.Sprintf("http://%s/api/v1/entries/ord-2/requeue", addr), "application/json", strings.NewReader("{}"))
		Expect(err).NotTo(HaveOccurred())
		b, _ := io.ReadAll(resp.Body)
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "no move through the API without --tokens")
		Expect(string(b)).To(ContainSubstring("start faultline ui with --tokens"))
		stop()
		Eventually(done).WithTimeout(uiStartTimeout).Should(Receive(Equal(cli.ExitOK)))
		Expect(errOut.String()).To(ContainSubstring("faultline ui: serving namespace \"ops\""))
		Expect(errOut.String()).To(ContainSubstring("the API's reads need no token here, its moves need --tokens"))
	})

	It("refuses --allow-requeue without --layout seed, and --prefix without it", func() {
		_, stderr, code := run("ui", "--redis-url", closedRedis, "--allow-requeue")
		Expect(code).To(Equal(cli.ExitInvalid), stderr)
		Expect(stderr).To(ContainSubstring("--allow-requeue goes with --layout seed"))
		_, stderr, code = run("ui", "--redis-url", closedRedis, "--prefix", "x:")
		Expect(code).To(Equal(cli.ExitInvalid), stderr)
		Expect(stderr).To(ContainSubstring("--prefix"))
	})

	It("serves the seed layout read-only, and with --allow-requeue its safe requeue", func() {
		m := redistest.Mini(GinkgoRandomSeed())
		url := "redis://" + m.Addr() + "/0"
		m.Lpush("app:dead_letter", `{"job": {"task": "payment", "amount": 100}, "error": "Gateway timeout", "retries": 3, "failed_at": "2026-01-02T03:04:05", "status": "failed"}`)
		for _, allow := range []bool{false, true} {
			args := []string{"ui", "--redis-url", url, "--layout", "seed", "--prefix", "app:"}
			if allow {
				args = append(args, "--allow-requeue")
			}
			get, stop := serveUI(args...)
			code, body := get("/")
			Expect(code).To(Equal(http.StatusOK))
			Expect(body).To(ContainSubstring("Gateway timeout"))
			Expect(body).To(ContainSubstring("dead_letter@0#"))
			if allow {
				Expect(body).To(ContainSubstring(`id="bulk-requeue"`))
			} else {
				Expect(body).To(ContainSubstring("Read-only"))
			}
			code, _ = get("/seed/bulk")
			if allow {
				Expect(code).To(Equal(http.StatusOK))
			} else {
				Expect(code).To(Equal(http.StatusForbidden))
			}
			stop()
		}
	})
})

// uiRaceLane is the spec where faultline ui's API and faultline dlq
// requeue --all requeue the same n entries at once, on one Redis.
func uiRaceLane(name string, n int, start func() string) {
	It(fmt.Sprintf("and faultline dlq requeue --all, requeueing the same %d entries at once on %s, requeue each exactly once", n, name), func() {
		url := start()
		ids := raceSeed(url, n)
		h, err := ui.New(ui.Config{Store: raceStore(url, 50), Namespace: raceNamespace, Listen: "127.0.0.1:8080",
			Tokens: map[string]string{"ui-op": "ui-op-token-0123456789abcdef"}})
		Expect(err).NotTo(HaveOccurred())
		post := func(body string) (int, map[string]any) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/requeue", strings.NewReader(body))
			req.Host = "127.0.0.1:8080"
			req.Header.Set("Authorization", "Bearer ui-op-token-0123456789abcdef")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var out map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &out)
			return rec.Code, out
		}
		code, count := post(`{"dry_run": true}`)
		Expect(code).To(Equal(http.StatusOK), "%v", count)
		Expect(count["stated"]).To(BeNumerically("==", n))

		var (
			wg      sync.WaitGroup
			cliSum  raceSummary
			cliErr  error
			uiCode  int
			uiOut   map[string]any
			release = make(chan struct{})
		)
		wg.Go(func() {
			<-release
			cliSum, cliErr = raceRun(url, "cli-op", 50)
		})
		// The UI starts once the CLI is moving entries, so that the two
		// runs overlap (the CLI's count and confirmation take a while).
		watch := raceStore(url, 0)
		wg.Go(func() {
			defer GinkgoRecover()
			<-release
			Eventually(func() (int, error) {
				st, err := watch.Stats(context.Background())
				return st.ByStatus["requeued"], err
			}).WithTimeout(time.Minute).WithPolling(time.Millisecond).Should(BeNumerically(">", 0), "the CLI moves its first entry")
			uiCode, uiOut = post(fmt.Sprintf(`{"cut_off": %q, "stated": %d, "plan": %q}`, count["cut_off"], n, count["plan"]))
		})
		close(release)
		wg.Wait()
		Expect(cliErr).NotTo(HaveOccurred())
		Expect(uiCode).To(Equal(http.StatusOK), "%v", uiOut)
		uiMoved := int(uiOut["moved"].(float64))
		GinkgoWriter.Printf("the CLI moved %d, the UI %d\n", cliSum.Moved, uiMoved)
		Expect(cliSum.Moved+uiMoved).To(Equal(n), "every entry moved by one of them")

		a := auditRace(raceStore(url, 0))
		expectEachOnce(a, ids)
		Expect(a.count(func(e *dlq.Entry) bool { return e.Status == dlq.Requeued })).To(Equal(n))
	})
}

var _ = Describe("faultline ui under a race", func() {
	Describe("faultline ui's bulk requeue", func() {
		uiRaceLane("miniredis", raceMiniN, func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
		uiRaceLane("a real redis-server", raceN, func() string {
			srv := startRedis()
			DeferCleanup(srv.Stop)
			return "redis://" + srv.Addr + "/0"
		})
	})
})

// serveUI runs faultline ui with args on a free loopback port until the
// returned stop is called; get fetches a path.
func serveUI(args ...string) (get func(string) (int, string), stop func()) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	Expect(ln.Close()).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		defer GinkgoRecover()
		done <- cli.Main(ctx, append(args, "--listen", addr), &out, &errOut)
	}()
	get = func(path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://%s%s", addr, path))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	Eventually(func() int { code, _ := get("/"); return code }).WithTimeout(uiStartTimeout).Should(Equal(http.StatusOK), func() string { return errOut.String() })
	stop = func() {
		cancel()
		Eventually(done).WithTimeout(uiStartTimeout).Should(Receive(Equal(cli.ExitOK)))
	}
	DeferCleanup(cancel)
	return get, stop
}
