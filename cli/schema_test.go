package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"orcr/cli"
)

// TestSchemaIsTheSameDocument holds `orcr api schema` to the document main printed
// before the methods moved into the features' api packages (testdata, saved from
// 4e79e35, plus server.info's providers, added since): scripts and clients in other
// languages generate from it, so a method,
// param, result, event or error code must not change by moving code. The events list
// is compared as a set: the kernel's come first, then each feature's in the order Go
// initialises the api packages.
func TestSchemaIsTheSameDocument(t *testing.T) {
	var out, errb bytes.Buffer
	o := cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
	if code := cli.Run(context.Background(), []string{"orcr", "api", "schema"}, o); code != 0 {
		t.Fatalf("api schema: exit %d: %s", code, errb.String())
	}
	golden, err := os.ReadFile("testdata/schema.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	want, got := schemaDoc(t, golden), schemaDoc(t, out.Bytes())
	for k := range want {
		if !reflect.DeepEqual(want[k], got[k]) {
			w, _ := json.MarshalIndent(want[k], "", "  ")
			g, _ := json.MarshalIndent(got[k], "", "  ")
			t.Errorf("schema %q differs from main's:\nwant %.2000s\ngot  %.2000s", k, w, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("schema has %q, main's did not", k)
		}
	}
}

func schemaDoc(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	events, _ := doc["events"].([]any)
	names := make([]string, 0, len(events))
	for _, e := range events {
		names = append(names, e.(string))
	}
	slices.Sort(names)
	doc["events"] = names
	return doc
}
