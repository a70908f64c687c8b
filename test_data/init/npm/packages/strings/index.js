const { capitalize } = require("./lib/capitalize");

module.exports = { capitalize, shout: (s) => capitalize(s) + "!" };
