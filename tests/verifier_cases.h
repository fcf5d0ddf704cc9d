/* tests/verifier_cases.h: unit cases for grpo.c's countdown verifier (countdown_verify,
   countdown_parse_prompt), included by tests/test_grpo.c. Each completion is copied into a
   heap buffer of exactly `len` bytes (no NUL), so AddressSanitizer (make test-asan) reports
   any read past the end. */
#define MAXN 8

typedef struct {
    const char *name;
    int nums[MAXN];
    int n;
    int target;
    const char *text;   /* completion bytes */
    int len;            /* -1: strlen(text); else exactly this many bytes */
    float expect;
} VerifyCase;

static const VerifyCase verify_cases[] = {
    /* ---- correct solutions ---- */
    {"basic",                       {7, 3, 5}, 3, 26, "7*3=21,21+5=26", -1, 1},
    {"commuted operands",           {7, 3, 5}, 3, 26, "3*7=21,5+21=26", -1, 1},
    {"given numbers in any order",  {5, 7, 3}, 3, 26, "7*3=21,21+5=26", -1, 1},
    {"chain of additions",          {1, 2, 3, 4}, 4, 10, "4+3=7,7+2=9,9+1=10", -1, 1},
    {"independent steps reordered", {1, 2, 3, 4}, 4, 10, "3+4=7,1+2=3,7+3=10", -1, 1},
    {"intermediate equals a given", {1, 2, 3, 4}, 4, 10, "1+2=3,3+3=6,6+4=10", -1, 1},
    {"two products then sum",       {1, 2, 3, 4}, 4, 10, "2*3=6,1*4=4,6+4=10", -1, 1},
    {"multiply by 1 at the end",    {1, 2, 3, 4}, 4, 10, "4*3=12,12-2=10,10*1=10", -1, 1},
    {"divide by 1 at the end",      {1, 2, 3, 4}, 4, 10, "4*3=12,12-2=10,10/1=10", -1, 1},
    {"exact division",              {8, 4, 3}, 3, 6, "8/4=2,2*3=6", -1, 1},
    {"subtractions",                {10, 3, 2}, 3, 5, "10-3=7,7-2=5", -1, 1},
    {"duplicate given numbers",     {5, 5, 2}, 3, 12, "5+5=10,10+2=12", -1, 1},
    {"two numbers",                 {6, 4}, 2, 24, "6*4=24", -1, 1},
    {"6-digit intermediate",        {999, 999, 1}, 3, 998002, "999*999=998001,998001+1=998002", -1, 1},
    {"target reached, then *1",     {7, 3, 5, 1}, 4, 26, "7*3=21,21+5=26,26*1=26", -1, 1},

    /* ---- malformed steps ---- */
    {"step missing =c",             {7, 3, 5}, 3, 26, "7*3=21,21+5", -1, 0},
    {"step missing operator",       {7, 3, 5}, 3, 26, "7*3=21,215=26", -1, 0},
    {"unknown operator x",          {7, 3, 5}, 3, 26, "7x3=21,21+5=26", -1, 0},
    {"double operator",             {7, 3, 5}, 3, 26, "7**3=21,21+5=26", -1, 0},
    {"double comma",                {7, 3, 5}, 3, 26, "7*3=21,,21+5=26", -1, 0},
    {"double equals",               {7, 3, 5}, 3, 26, "7*3==21,21+5=26", -1, 0},
    {"negative number literal",     {7, 3, 5}, 3, 26, "-7*3=21,21+5=26", -1, 0},
    {"plus sign literal",           {7, 3, 5}, 3, 26, "+7*3=21,21+5=26", -1, 0},
    {"expression without steps",    {7, 3, 5}, 3, 26, "7*3+5", -1, 0},
    {"expression with result",      {7, 3, 5}, 3, 26, "7*3+5=26", -1, 0},
    {"leading comma",               {7, 3, 5}, 3, 26, ",7*3=21,21+5=26", -1, 0},

    /* ---- pool violations ---- */
    {"number not offered",          {7, 3, 5}, 3, 26, "7*4=28,28-2=26", -1, 0},
    {"given number used twice",     {7, 3, 5}, 3, 54, "7*7=49,49+5=54", -1, 0},
    {"intermediate used twice",     {7, 3, 5}, 3, 47, "7*3=21,21+5=26,26+21=47", -1, 0},
    {"result used before made",     {7, 3, 5}, 3, 26, "21+5=26,7*3=21", -1, 0},
    {"zero not in pool",            {7, 3, 5}, 3, 26, "7*3=21,21+5=26,26+0=26", -1, 0},

    /* ---- arithmetic violations ---- */
    {"wrong arithmetic",            {7, 3, 5}, 3, 25, "7*3=20,20+5=25", -1, 0},
    {"wrong final arithmetic",      {7, 3, 5}, 3, 26, "7*3=21,21*5=26", -1, 0},
    {"division by zero",            {5, 0, 3}, 3, 3, "5/0=0,0+3=3", -1, 0},
    {"zero divided (zero result)",  {0, 5, 3}, 3, 3, "0/5=0,0+3=3", -1, 0},
    {"inexact division",            {7, 2, 4}, 3, 12, "7/2=3,3*4=12", -1, 0},
    {"negative result",             {3, 5, 10}, 3, 12, "3-5=2,10+2=12", -1, 0},
    {"negative result spelled -",   {3, 5, 10}, 3, 12, "3-5=-2,10--2=12", -1, 0},
    {"zero result",                 {5, 5, 7}, 3, 7, "5-5=0,0+7=7", -1, 0},
    {"7-digit intermediate",        {1000, 1000, 1000}, 3, 1000, "1000*1000=1000000,1000000/1000=1000", -1, 0},
    {"7-digit with leading zeros",  {7, 3, 5}, 3, 26, "0000007*3=21,21+5=26", -1, 0},

    /* ---- incomplete / wrong final ---- */
    {"missing final step",          {7, 3, 5}, 3, 26, "7*3=21", -1, 0},
    {"not all numbers used",        {7, 3, 5, 1}, 4, 26, "7*3=21,21+5=26", -1, 0},
    {"unused number equals target", {26, 3, 5}, 3, 26, "3+5=8", -1, 0},
    {"final result != target",      {7, 3, 5}, 3, 26, "7*3=21,21-5=16", -1, 0},
    {"final claim = target, wrong", {7, 3, 5}, 3, 26, "7*3=21,21-5=26", -1, 0},
    {"empty output",                {7, 3, 5}, 3, 26, "", 0, 0},
    {"empty output, n=1",           {26}, 1, 26, "", 0, 0},

    /* ---- trailing / embedded garbage ---- */
    {"trailing comma",              {7, 3, 5}, 3, 26, "7*3=21,21+5=26,", -1, 0},
    {"trailing junk",               {7, 3, 5}, 3, 26, "7*3=21,21+5=26x", -1, 0},
    {"trailing space",              {7, 3, 5}, 3, 26, "7*3=21,21+5=26 ", -1, 0},
    {"trailing newline",            {7, 3, 5}, 3, 26, "7*3=21,21+5=26\n", -1, 0},
    {"trailing =26",                {7, 3, 5}, 3, 26, "7*3=21,21+5=26=26", -1, 0},
    {"trailing >",                  {7, 3, 5}, 3, 26, "7*3=21,21+5=26>", -1, 0},
    {"leading zero operand",        {7, 3, 5}, 3, 26, "07*3=21,21+5=26", -1, 0},
    {"leading zero result",         {7, 3, 5}, 3, 26, "7*3=021,021+5=26", -1, 0},
    {"space after comma",           {7, 3, 5}, 3, 26, "7*3=21, 21+5=26", -1, 0},
    {"spaces around operator",      {7, 3, 5}, 3, 26, "7 * 3=21,21+5=26", -1, 0},
    {"leading space",               {7, 3, 5}, 3, 26, " 7*3=21,21+5=26", -1, 0},
    {"embedded NUL",                {7, 3, 5}, 3, 26, "7*3=21\0,21+5=26", 15, 0},
    {"trailing NUL",                {7, 3, 5}, 3, 26, "7*3=21,21+5=26\0", 15, 0},
    {"high byte",                   {7, 3, 5}, 3, 26, "7*3=21,21+5=26\xff", -1, 0},
    {"len stops mid-number",        {7, 3, 5}, 3, 26, "7*3=21,21+5=26", 13, 0},
    {"len stops after operator",    {7, 3, 5}, 3, 26, "7*3=21,21+5=26", 10, 0},
    {"len stops mid first step",    {7, 3, 5}, 3, 26, "7*3=21,21+5=26", 5, 0},
    {"len stops after a full step", {7, 3, 5}, 3, 26, "7*3=21,21+5=26", 6, 0},
    {"len 1",                       {7, 3, 5}, 3, 26, "7*3=21,21+5=26", 1, 0},
    {"len cuts a solved prefix",    {6, 4}, 2, 2, "6*4=24", 5, 0},  /* "6*4=2" */

    /* ---- problem limits ---- */
    {"more numbers than pool max",  {0}, COUNTDOWN_MAX_POOL + 1, 1, "1+1=2", -1, 0},
    {"no numbers",                  {0}, 0, 1, "1+1=2", -1, 0},
};

typedef struct {
    const char *name;
    const char *text;
    int len;            /* -1: strlen */
    int max_nums;
    int expect_rc;
    int n;              /* expected on success */
    int nums[MAXN];
    int target;
} PromptCase;

static const PromptCase prompt_cases[] = {
    {"prompt ok",                "7 3 5>26:", -1, 8, 0, 3, {7, 3, 5}, 26},
    {"prompt 4 numbers",         "20 1 13 9>100:", -1, 8, 0, 4, {20, 1, 13, 9}, 100},
    {"prompt 6-digit target",    "999 999 1>998002:", -1, 8, 0, 3, {999, 999, 1}, 998002},
    {"prompt exactly max_nums",  "1 2 3 4>10:", -1, 4, 0, 4, {1, 2, 3, 4}, 10},
    {"prompt too many numbers",  "1 2 3 4 5>15:", -1, 4, -1, 0, {0}, 0},
    {"prompt double space",      "7  3>21:", -1, 8, -1, 0, {0}, 0},
    {"prompt missing colon",     "7 3 5>26", -1, 8, -1, 0, {0}, 0},
    {"prompt trailing space",    "7 3 5>26: ", -1, 8, -1, 0, {0}, 0},
    {"prompt leading zero",      "07 3>21:", -1, 8, -1, 0, {0}, 0},
    {"prompt 7-digit target",    "7 3>1000000:", -1, 8, -1, 0, {0}, 0},
    {"prompt no numbers",        ">5:", -1, 8, -1, 0, {0}, 0},
    {"prompt no target",         "7 3>:", -1, 8, -1, 0, {0}, 0},
    {"prompt comma separated",   "7,3>21:", -1, 8, -1, 0, {0}, 0},
    {"prompt len stops early",   "7 3 5>26:", 8, 8, -1, 0, {0}, 0},
    {"prompt empty",             "", 0, 8, -1, 0, {0}, 0},
};

