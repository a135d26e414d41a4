module lth.local/hey-build

go 1.26.8

tool github.com/rakyll/hey

require (
	github.com/rakyll/hey v0.1.5 // indirect
	golang.org/x/net v0.48.0 // indirect
	golang.org/x/text v0.33.0 // indirect
)
