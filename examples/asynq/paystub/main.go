// Command paystub is a stand-in for faultline's payment gateway in
// selftest.sh: it declines every charge POSTed to /call with a 402 and a
// Stripe-like card_error, counts the calls per X-Faultline-Job, and
// reports {"calls", "jobs", "calledTwice"} on GET /stats. It listens on
// the loopback address given as its argument (127.0.0.1:PORT).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
)

const declined = `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds"}}`

func main() {
	if len(os.Args) != 2 || !strings.HasPrefix(os.Args[1], "127.0.0.1:") {
		log.Fatal("usage: paystub 127.0.0.1:PORT")
	}
	var mu sync.Mutex
	calls := map[string]int{}
	http.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls[r.Header.Get("X-Faultline-Job")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPaymentRequired)
		fmt.Fprint(w, declined)
	})
	http.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		total, twice := 0, 0
		for _, n := range calls {
			total += n
			if n > 1 {
				twice++
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]int{"calls": total, "jobs": len(calls), "calledTwice": twice})
	})
	log.Fatal(http.ListenAndServe(os.Args[1], nil))
}
