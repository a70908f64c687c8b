// Prints a greeting for the first argument.

const name = process.argv[2] ?? "stranger";
console.log(`hello, ${name}`);
