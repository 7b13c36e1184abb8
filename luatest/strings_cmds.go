package luatest

var stringCommands = map[string]handler{}
