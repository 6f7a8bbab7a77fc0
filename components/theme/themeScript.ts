// The theme is chosen before the first paint: this tiny script runs inline in <head> (with the page's CSP nonce),
// reads the viewer's choice from local storage and puts `dark` on <html> when the choice, or the system when the
// choice is "system", says dark. Without it a dark-mode viewer would see the light page flash until hydration.
// Kept in sync with theme.ts (same key and rule); a test reloads the page to check the class is there at once.

export const THEME_KEY = 'nimbus.theme';

export const THEME_SCRIPT = `(function(){try{var c=localStorage.getItem('${THEME_KEY}');if(c!=='light'&&c!=='dark')c='system';var d=c==='dark'||(c==='system'&&window.matchMedia('(prefers-color-scheme: dark)').matches);var e=document.documentElement;e.classList.toggle('dark',d);e.setAttribute('data-theme',c);}catch(x){}})();`;
