package wire

import (
	"encoding/json"
	"testing"
)

// An option stored as a plain string by older records reads as a label meaning
// "other"; a full one keeps every field (fast.Option's reader, which this one is).
func TestOptionReadsPlainStringsAndFullOptions(t *testing.T) {
	var opts []Option
	if err := json.Unmarshal([]byte(`["Yes",{"label":"No","key":"2","meaning":"deny","text":true}]`), &opts); err != nil {
		t.Fatal(err)
	}
	want := []Option{{Label: "Yes", Meaning: MeaningOther}, {Label: "No", Key: "2", Meaning: MeaningDeny, Text: true}}
	if len(opts) != 2 || opts[0] != want[0] || opts[1] != want[1] {
		t.Fatalf("got %+v, want %+v", opts, want)
	}
	if err := json.Unmarshal([]byte(`[7]`), &opts); err == nil {
		t.Fatal("a number read as an option")
	}
}
