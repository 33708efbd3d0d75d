package wire

// FieldRange is fieldRange for the external tests, which can import the api packages
// whose types carry range tags.
var FieldRange = fieldRange
