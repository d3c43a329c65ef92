import { ESLint } from 'eslint';
const eslint = new ESLint({ cwd: process.cwd() });
const [r] = await eslint.lintText(process.argv[3], { filePath: process.cwd() + '/' + process.argv[2] });
console.log(JSON.stringify(r.messages, null, 1));
