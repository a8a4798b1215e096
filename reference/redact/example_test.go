package redact_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/faultline/faultline/reference/redact"
)

func Example() {
	r := redact.Default()
	fmt.Println(r.String("charge failed: card 4242 4242 4242 4242 declined, password=hunter2"))
	fmt.Println(r.String("dial postgres://app:s3cr3t@db:5432/orders: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"))
	fmt.Println(r.String("order 1234567890123 failed: token expired"))
	// Output:
	// charge failed: card [CARD ****4242] declined, password=[REDACTED]
	// dial postgres://app:[REDACTED]@db:5432/orders: Authorization: Bearer [REDACTED]
	// order 1234567890123 failed: token expired
}

func ExampleRedactor_Fields() {
	payload := map[string]any{
		"card":    "4242 4242 4242 4242",
		"token":   "abc",
		"headers": map[string]any{"Authorization": "Bearer xyz"},
		"amount":  100,
		"note":    "password=hunter2",
	}
	out, _ := json.Marshal(redact.Default().Fields(payload))
	fmt.Println(string(out))
	// Output:
	// {"amount":100,"card":"[CARD ****4242]","headers":{"Authorization":"Bearer [REDACTED]"},"note":"password=[REDACTED]","token":"[REDACTED]"}
}

func ExampleRedactor_Header() {
	h := http.Header{"Authorization": {"Bearer xyz"}, "Cookie": {"session=abc"}, "Accept": {"application/json"}}
	fmt.Println(redact.Default().Header(h))
	// Output:
	// map[Accept:[application/json] Authorization:[Bearer [REDACTED]] Cookie:[[REDACTED]]]
}

func ExampleRedactor_URL() {
	r := redact.Default()
	fmt.Println(r.URL("https://hooks.slack.com/services/T000/B000/XXXXSECRET"))
	fmt.Println(r.URL("postgres://app:pw@db:5432/orders?sslmode=disable"))
	fmt.Println(r.URL("not a url"))
	// Output:
	// https://hooks.slack.com/services/****
	// postgres://app@db:5432/orders?sslmode=****
	// [REDACTED URL]
}

func ExampleNew() {
	r, err := redact.New(redact.Config{
		Keys:     append(redact.DefaultKeys(), "iban"),
		Patterns: []string{`\bcus_[A-Za-z0-9]+`},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.String("customer cus_Nf9X2 iban=DE89370400440532013000"))

	_, err = redact.New(redact.Config{Patterns: []string{`cus_\w+`, `(`}})
	fmt.Println(err)
	// Output:
	// customer [REDACTED] iban=[REDACTED]
	// redact: invalid Patterns[1] "(": is not a valid RE2 regular expression: error parsing regexp: missing closing ): `(`
}

func ExampleSecretURL() {
	type AlertConfig struct {
		Channel string
		Webhook redact.SecretURL
	}
	hook, err := redact.NewSecretURL("https://hooks.slack.com/services/T000/B000/XXXXSECRET")
	if err != nil {
		panic(err)
	}
	cfg := AlertConfig{Channel: "#payments-oncall", Webhook: hook}

	fmt.Printf("%+v\n", cfg)
	out, _ := json.Marshal(cfg)
	fmt.Println(string(out))
	fmt.Println(len(cfg.Webhook.Reveal()) > 0) // only the HTTP client sees the real URL

	_, err = redact.NewSecretURL("hooks.slack.com/services/T000/B000/XXXXSECRET")
	fmt.Println(err)
	// Output:
	// {Channel:#payments-oncall Webhook:https://hooks.slack.com/services/****}
	// {"Channel":"#payments-oncall","Webhook":"https://hooks.slack.com/services/****"}
	// true
	// redact: invalid secret URL: must be an absolute http or https URL
}
