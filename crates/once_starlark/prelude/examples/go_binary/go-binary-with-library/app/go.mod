module example.com/app

go 1.19

// Lets `go build` find the library; once resolves it through the target's deps.
require example.com/greeting v0.0.0

replace example.com/greeting => ../lib/greeting
